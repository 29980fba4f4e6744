"""HTML to visible text and link targets (selectolax/lexbor: ~10,000 docs/s here)."""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser

_INVISIBLE = ("script", "style", "noscript", "template", "head")
_LINK_ATTRIBUTES = (("a", "href"), ("img", "src"), ("area", "href"), ("form", "action"))
# Elements that sit inside a line of text: a browser draws "<b>V</b>iagra" as one word, so
# their text joins its neighbours'. Every other element (p, div, td, br, li ...) separates.
_INLINE = (
    "a", "abbr", "b", "big", "blink", "cite", "code", "del", "dfn", "em", "font", "i", "ins",
    "kbd", "label", "mark", "nobr", "q", "s", "samp", "small", "span", "strike", "strong",
    "sub", "sup", "tt", "u", "var",
)  # fmt: skip


def html_text_and_urls(html: str) -> tuple[str, list[str]]:
    """Visible text of an HTML document (no tags, scripts, styles or comments) and its absolute
    http(s) link and image targets, from one parse.

    Words are split where a browser splits them: a comment or an inline element inside a word
    (``fr<!-- -->ee``, ``<b>V</b>iagra``, both common ways to hide words from filters) leaves
    it whole, while block elements and line breaks separate.
    """
    tree = LexborHTMLParser(html)
    urls: list[str] = []
    for tag, attribute in _LINK_ATTRIBUTES:
        for node in tree.css(f"{tag}[{attribute}]"):
            value = node.attributes.get(attribute) or ""
            if value.lower().startswith(("http://", "https://")):
                urls.append(value)
    tree.strip_tags(list(_INVISIBLE))
    root = tree.body or tree.root
    if root is None:
        return "", urls
    for node in list(root.traverse(include_text=True)):
        if node.tag == "-comment":
            node.decompose()
    tree.unwrap_tags(list(_INLINE))
    tree.merge_text_nodes()
    return root.text(separator=" "), urls
