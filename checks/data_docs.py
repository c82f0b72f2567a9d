"""Great Expectations Data Docs that render with no network and never echo data as markup.

GX's page templates load bootstrap, jQuery, popper, font-awesome, bootstrap-table, a datepicker and
vega from public CDNs, and fill every table client-side with bootstrap-table: offline the index is
empty and the pages unstyled. Here:

- the site's views are :class:`OfflinePageView` / :class:`OfflineIndexPageView`: tables GX would
  hand to bootstrap-table are rendered as plain HTML tables on the server, and every string from a
  validation result (unexpected values, group ids, topics) is HTML-escaped before it reaches a page;
- :func:`localize_site` copies bootstrap 4, jQuery and font-awesome from their installed XStatic
  packages into ``static/vendor/`` of the site at build time, points every page at those copies,
  and drops the references nothing installed can serve (vega, the datepicker, bootstrap-table,
  the dark theme, GX's remote logo): none of them is needed once the tables are static.
- :func:`external_references` lists whatever still points off the machine, so a build can prove
  the site is self-contained.
"""

from __future__ import annotations

import html
import importlib
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from great_expectations.render.view import DefaultJinjaIndexPageView, DefaultJinjaPageView
from jinja2 import ChoiceLoader, DictLoader, pass_context
from offsetops.coordinator_core.atomic import write_bytes_atomic, write_text_atomic
from offsetops.coordinator_core.untrusted import read_regular_file, read_regular_text

VENDOR_DIR = "static/vendor"

# site path under static/vendor -> (XStatic package, file or dir inside its data dir)
_VENDOR_FILES: dict[str, tuple[str, str]] = {
    "jquery/jquery.min.js": ("xstatic.pkg.jquery", "jquery.min.js"),
    "bootstrap/css/bootstrap.min.css": ("xstatic.pkg.bootstrap", "css/bootstrap.min.css"),
    "bootstrap/js/bootstrap.bundle.min.js": ("xstatic.pkg.bootstrap", "js/bootstrap.bundle.min.js"),
    "font-awesome/css/all.min.css": ("xstatic.pkg.font_awesome", "css/all.min.css"),
    "font-awesome/webfonts": ("xstatic.pkg.font_awesome", "webfonts"),
}

# A CDN URL (by substring) -> the vendored copy that replaces it; None drops the tag.
_CDN_MAP: tuple[tuple[str, str | None], ...] = (
    ("/jquery-3", "jquery/jquery.min.js"),
    ("/bootstrap/4.3.1/css/bootstrap.min.css", "bootstrap/css/bootstrap.min.css"),
    ("/bootstrap/4.3.1/js/bootstrap.min.js", "bootstrap/js/bootstrap.bundle.min.js"),  # popper included
    ("/font-awesome/", "font-awesome/css/all.min.css"),
    ("/popper.js/", None),
    ("bootstrap-table", None),
    ("bootstrap-datepicker", None),
    ("bootstrap-dark", None),
    ("/npm/vega", None),
)

_TAG_WITH_URL = re.compile(
    r"""<(?P<tag>script|link|img)\b(?P<attrs>[^>]*?)\b(?P<attr>src|href)\s*=\s*["'](?P<url>(?:https?:)?//[^"']+)["'](?P<rest>[^>]*)>(?:\s*</script>)?""",
    re.I,
)
_ANY_EXTERNAL = re.compile(r"""\b(?:src|href)\s*=\s*["']((?:https?:)?//[^"']+)["']""", re.I)
_CSS_URL = re.compile(r"""url\(\s*["']?((?:https?:)?//[^"')]+)""", re.I)
_CSS_URL_CALL = re.compile(r"""url\(\s*["']?(?:https?:)?//[^)]*\)""", re.I)
_ANCHOR_EXTERNAL = re.compile(r"""<a\b[^>]*\bhref\s*=\s*["'](?:https?:)?//""", re.I)

# bootstrap-table's job done on the server: a static, escaped table (same ids, so links still work)
_STATIC_TABLE = """{% include 'content_block_header.j2' %}
{% set table_id = content_block_id ~ "-body-table" %}
<table id="{{ table_id }}" class="table table-sm table-hover ge-static-table">
  <thead><tr>
  {%- for column in content_block["table_columns"] %}<th>{{ column.get("title", "") | e }}</th>{% endfor -%}
  </tr></thead>
  <tbody>
  {%- for row in content_block["table_data"] | render_bootstrap_table_data %}
    <tr>
    {%- for column in content_block["table_columns"] %}
      {%- set cell = row.get(column["field"], "") -%}
      {%- if loop.first and row.get("_table_row_link_path") -%}
      <td><a href="{{ row["_table_row_link_path"] | e }}">{{ cell }}</a></td>
      {%- else -%}
      <td>{{ cell }}</td>
      {%- endif -%}
    {%- endfor -%}
    </tr>
  {%- endfor %}
  </tbody>
</table>
"""


def _escape_leaves(content_block: Any) -> Any:
    """Strings inside a list of content blocks are data: escape them; leave rendered blocks alone."""
    if isinstance(content_block, str):
        return html.escape(content_block, quote=True)
    if isinstance(content_block, list):
        return [_escape_leaves(el) if isinstance(el, str | list) else el for el in content_block]
    return content_block


class _OfflineViewMixin:
    """Template overrides and escaping shared by the page and index views."""

    env: Any

    def _install_overrides(self) -> None:
        # our templates first (the static table; no newsletter footer), GX's for everything else
        overrides = {"bootstrap_table.j2": _STATIC_TABLE, "cloud-footer.j2": ""}
        self.env.loader = ChoiceLoader([DictLoader(overrides), self.env.loader])
        self.env.filters["render_content_block"] = self.render_content_block

    @pass_context
    def render_content_block(  # type: ignore[override]
        self,
        jinja_context: Any,
        content_block: Any,
        index: Any = None,
        content_block_id: Any = None,
        render_to_markdown: bool = False,
    ) -> Any:
        """GX returns a plain string block as is (markup); a plain string here is always a value."""
        return super().render_content_block(  # type: ignore[misc]
            jinja_context,
            _escape_leaves(content_block),
            index,
            content_block_id=content_block_id,
            render_to_markdown=render_to_markdown,
        )


class OfflinePageView(_OfflineViewMixin, DefaultJinjaPageView):
    """Expectation suite and validation result pages: static tables, escaped values."""

    def __init__(self, custom_styles_directory: str | None = None, custom_views_directory: str | None = None):
        super().__init__(custom_styles_directory, custom_views_directory)
        self._install_overrides()


class OfflineIndexPageView(_OfflineViewMixin, DefaultJinjaIndexPageView):
    """The site index: the suites and validations listed in static tables."""

    def __init__(self, custom_styles_directory: str | None = None, custom_views_directory: str | None = None):
        super().__init__(custom_styles_directory, custom_views_directory)
        self._install_overrides()


def site_config(data_docs_dir: Path) -> dict[str, Any]:
    """A SiteBuilder config for ``data_docs_dir`` that uses the offline views everywhere."""
    page_view = {"module_name": __name__, "class_name": OfflinePageView.__name__}
    return {
        "class_name": "SiteBuilder",
        "show_how_to_buttons": False,  # the walkthrough modal and the newsletter footer
        "site_index_builder": {
            "class_name": "DefaultSiteIndexBuilder",
            "view": {"module_name": __name__, "class_name": OfflineIndexPageView.__name__},
        },
        "site_section_builders": {
            "expectations": {"view": page_view},
            "validations": {"view": page_view},
            "profiling": {"view": page_view},
        },
        "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(data_docs_dir)},
    }


class VendorAssetError(RuntimeError):
    """An XStatic package the offline site needs is not installed."""


def _package_data(module: str, relative: str) -> Path:
    try:
        base = Path(importlib.import_module(module).BASE_DIR)
    except ImportError as exc:
        dist = module.rsplit(".", 1)[1].replace("_", "-")
        raise VendorAssetError(
            f"Data Docs need {module} for offline CSS/JS: install XStatic-{dist} (the gx extra)"
        ) from exc
    return base / relative


def _files_under(source: Path, dest: Path) -> list[tuple[Path, Path]]:
    """(file, where it goes) for ``source`` (a file, or every file under a directory) copied to ``dest``."""
    if not source.is_dir():
        return [(source, dest)]
    return [(f, dest / f.relative_to(source)) for f in sorted(source.rglob("*")) if f.is_file()]


def copy_vendor_assets(site_dir: Path) -> list[Path]:
    """Copy the XStatic files into ``site_dir/static/vendor`` (run time, never kept in the repo)."""
    copied = []
    for target, (module, relative) in _VENDOR_FILES.items():
        source = _package_data(module, relative)
        dest = site_dir / VENDOR_DIR / target
        dest.parent.mkdir(parents=True, exist_ok=True)
        for src, out in _files_under(source, dest):
            write_bytes_atomic(out, src.read_bytes())  # packaged files; never through a link at ``out``
        copied.append(dest)
    return copied


def _local_for(url: str) -> str | Literal[False] | None:
    """The vendored path for a CDN URL, None to drop it, False when unknown."""
    if "great-expectations-web-assets" in url and "logo" in url:
        return "static/images/logo-long.png"
    for needle, local in _CDN_MAP:
        if needle in url:
            return None if local is None else f"{VENDOR_DIR}/{local}"
    return False


def localize_page(text: str, page: Path, site_dir: Path) -> str:
    """Point one page's CDN tags at the vendored copies; drop the ones nothing local replaces."""
    rel_root = os.path.relpath(site_dir, page.parent)

    def swap(m: re.Match[str]) -> str:
        local = _local_for(m.group("url"))
        if local is False:
            return m.group(0)
        if local is None:
            return ""
        path = f"{rel_root}/{local}" if rel_root != "." else local
        rest = re.sub(r"\s(integrity|crossorigin)\s*=\s*[\"'][^\"']*[\"']", "", m.group("rest"))
        attrs = re.sub(r"\s(integrity|crossorigin)\s*=\s*[\"'][^\"']*[\"']", "", m.group("attrs"))
        closing = "></script>" if m.group("tag").lower() == "script" else ">"
        return f'<{m.group("tag")}{attrs}{m.group("attr")}="{html.escape(path)}"{rest}{closing}'

    # GX inlines its stylesheet into each page; its dark-mode logo comes from S3
    return _CSS_URL_CALL.sub("none", _TAG_WITH_URL.sub(swap, text))


def localize_site(site_dir: str | Path) -> list[str]:
    """Vendor the assets and rewrite every page of the site; returns what still points outside."""
    site = Path(site_dir)
    copy_vendor_assets(site)
    for page in site.rglob("*.html"):
        text = read_regular_text(page, kind="report")
        new = localize_page(text, page, site)
        if new != text:
            write_text_atomic(page, new)
    for sheet in (site / "static" / "styles").glob("*.css"):
        # GX's stylesheet pulls a dark-mode logo from S3: without it the plain background shows
        text = read_regular_text(sheet, kind="report")
        new = _CSS_URL_CALL.sub("none", text)
        if new != text:
            write_text_atomic(sheet, new)
    return external_references(site)


def external_references(site_dir: str | Path, *, include_links: bool = False) -> list[str]:
    """``file: url`` for every resource a page would load from another machine.

    Plain ``<a href>`` links only load when clicked; ``include_links`` lists them too.
    """
    site = Path(site_dir)
    found = []
    files: Iterable[Path] = [*site.rglob("*.html"), *site.rglob("*.css")]
    for path in files:
        text = read_regular_file(path, kind="report").decode("utf-8", errors="replace")
        if path.suffix == ".html" and not include_links:
            text = _ANCHOR_EXTERNAL.sub("<a ", text)
        for m in (*_ANY_EXTERNAL.finditer(text), *_CSS_URL.finditer(text)):
            found.append(f"{path.relative_to(site)}: {m.group(1)}")
    return found
