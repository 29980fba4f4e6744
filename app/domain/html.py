"""HTML to visible text and link targets (selectolax/lexbor: ~10,000 docs/s here)."""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser

_INVISIBLE = ("script", "style", "noscript", "template", "head")
_LINK_ATTRIBUTES = (("a", "href"), ("img", "src"), ("area", "href"), ("form", "action"))


def html_text_and_urls(html: str) -> tuple[str, list[str]]:
    """Visible text of an HTML document (no tags, scripts, styles or comments) and its absolute
    http(s) link and image targets, from one parse."""
    tree = LexborHTMLParser(html)
    urls: list[str] = []
    for tag, attribute in _LINK_ATTRIBUTES:
        for node in tree.css(f"{tag}[{attribute}]"):
            value = node.attributes.get(attribute) or ""
            if value.lower().startswith(("http://", "https://")):
                urls.append(value)
    tree.strip_tags(list(_INVISIBLE))
    root = tree.body or tree.root
    return ("" if root is None else root.text(separator=" ")), urls
