"""floe is the metadata core: it never imports the web layer (ARCHITECTURE.md)."""

import re
from pathlib import Path

FLOE = Path(__file__).resolve().parents[2] / "floe"
WEB_IMPORT = re.compile(r"^\s*(from|import) (django|rest_framework|celery|explorer|api)\b", re.M)


def test_floe_has_python_modules() -> None:
    assert list(FLOE.rglob("*.py")), f"no modules under {FLOE}"


def test_floe_never_imports_django_drf_or_celery() -> None:
    offenders = [
        f"{path.relative_to(FLOE.parent)}: {m.group(0).strip()}"
        for path in sorted(FLOE.rglob("*.py"))
        for m in WEB_IMPORT.finditer(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
