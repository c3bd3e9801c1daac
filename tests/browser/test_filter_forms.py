"""In a real browser: the Tasks and Audit filter forms are drawn like the site's other forms
(labelled inputs on a row, inputs and selects with the search forms' border, radius, padding
and font), and a table's Tasks tab keeps the table's navigation like its other tabs."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import screenshot

TABLE = "/catalogs/local/namespaces/web/tables/events/"
pytestmark = pytest.mark.django_db(transaction=True)

LOOK = ("borderTopWidth", "borderTopStyle", "borderTopColor", "borderTopLeftRadius",
        "paddingTop", "paddingLeft", "fontFamily", "fontSize", "backgroundColor")


def look(page: Any, selector: str) -> list[dict[str, str]]:
    """The computed look of every element ``selector`` matches."""
    return page.eval_on_selector_all(selector, "(els, keys) => els.map(el => {"
                                               " const s = getComputedStyle(el);"
                                               " return Object.fromEntries(keys.map(k =>"
                                               " [k, s[k]])); })", list(LOOK))


@pytest.mark.parametrize(("path", "form"), [
    ("/tasks/", "#task-filters"),
    (TABLE + "tasks/", "#task-filters"),
    (TABLE + "audit/", "#audit-filters"),
])
def test_the_task_and_audit_filters_look_like_the_sites_forms(page: Any, site: str, path: str,
                                                              form: str) -> None:
    page.goto(site + TABLE + "plan/")
    (reference,) = look(page, "#plan-form input[name=filter]")
    page.goto(site + path)
    controls = look(page, f"{form} input[type=text], {form} select")
    assert len(controls) >= 3
    assert all(c == reference for c in controls), (controls, reference)
    assert page.eval_on_selector(form, "f => getComputedStyle(f).display") == "flex"
    boxes = [page.locator(f"{form} label").nth(i).bounding_box() for i in range(2)]
    assert boxes[1]["x"] > boxes[0]["x"] + boxes[0]["width"]  # side by side, not stacked
    assert abs(boxes[1]["y"] - boxes[0]["y"]) < 4
    screenshot(page, "filters-" + path.strip("/").replace("/", "-"), full_page=False)


def test_the_tasks_tab_keeps_the_tables_navigation(page: Any, site: str) -> None:
    page.goto(site + TABLE)
    page.click("#tab-tasks")
    page.wait_for_url(site + TABLE + "tasks/")
    assert page.locator("#table-tabs").is_visible()
    assert page.locator("#tab-tasks").get_attribute("aria-current") == "page"
    assert page.locator("h1[data-table='web.events']").count() == 1
    page.click("#table-tabs >> text=Snapshots")  # and the other tabs are one click away
    page.wait_for_url(site + TABLE + "snapshots/")
