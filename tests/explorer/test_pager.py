"""The one pager: links keep every other query parameter and set only their own."""

from django.core.paginator import Paginator
from django.template.loader import render_to_string
from django.test import RequestFactory


def render(query: str, **kw: object) -> str:
    request = RequestFactory().get("/x/?" + query)
    return render_to_string("explorer/table_pager.html", {"request": request, **kw})


def test_links_keep_filters_and_replace_the_page():
    page = Paginator(list(range(100)), 10).get_page(3)
    html = render("status=added&sort=-record_count&page=3", page=page)
    assert 'href="?status=added&amp;sort=-record_count&amp;page=2"' in html
    assert 'href="?status=added&amp;sort=-record_count&amp;page=4"' in html
    assert "Page 3 of 10 · 100 rows" in html


def test_a_named_parameter_leaves_the_other_pager_alone():
    files = Paginator(list(range(30)), 10).get_page(1)
    html = render("filter=id+%3D+1&mpage=2", page=files, param="fpage", noun="files")
    assert 'href="?filter=id+%3D+1&amp;mpage=2&amp;fpage=2"' in html
    assert "← Previous" not in html and "30 files" in html


def test_one_page_shows_the_count_only():
    page = Paginator([1, 2], 10).get_page(1)
    html = render("", page=page, noun="tables")
    assert "<nav" not in html and "2 tables" in html
