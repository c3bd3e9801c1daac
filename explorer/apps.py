import os
import sys

from django.apps import AppConfig


class ExplorerConfig(AppConfig):
    name = "explorer"
    verbose_name = "Floe explorer"

    def ready(self) -> None:
        """Every process of the site (web, worker, beat, manage.py) allocates pyarrow's
        buffers from FLOE_ARROW_MEMORY_POOL. A process that has not imported pyarrow yet is
        told through ARROW_DEFAULT_MEMORY_POOL, which pyarrow reads when it is imported
        (importing it here would cost a process that never uses it its memory)."""
        from django.conf import settings

        name = settings.FLOE_ARROW_MEMORY_POOL
        if "pyarrow" not in sys.modules:
            os.environ["ARROW_DEFAULT_MEMORY_POOL"] = name
            return
        import pyarrow as pa
        from django.core.exceptions import ImproperlyConfigured

        pools = {"system": pa.system_memory_pool, "mimalloc": pa.mimalloc_memory_pool,
                 "jemalloc": pa.jemalloc_memory_pool}
        try:
            pool = pools[name]()
        except NotImplementedError as exc:
            raise ImproperlyConfigured(
                f"FLOE_ARROW_MEMORY_POOL={name!r}: this build of pyarrow has no such "
                f"allocator ({exc})") from exc
        pa.set_memory_pool(pool)
