"""HTML to visible text and link targets (selectolax/lexbor: ~10,000 docs/s here)."""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser, LexborNode

_INVISIBLE = ("script", "style", "noscript", "template", "head")
_LINK_ATTRIBUTES = (("a", "href"), ("img", "src"), ("area", "href"), ("form", "action"))
# Elements that sit inside a line of text: a browser draws "<b>V</b>iagra" as one word, so
# entering or leaving them adds no space. Every other element (p, div, td, br, li ...)
# separates words.
_INLINE = frozenset(
    (
        "a", "abbr", "b", "big", "blink", "cite", "code", "del", "dfn", "em", "font", "i",
        "ins", "kbd", "label", "mark", "nobr", "q", "s", "samp", "small", "span", "strike",
        "strong", "sub", "sup", "tt", "u", "var",
    )
)  # fmt: skip

# One of the tags that carry an HTML document's text or links, as a whole tag name: "<a "
# or "<br>", never the "<a" of an address such as "<a.b@example.com>".
_HTML_TAG = re.compile(
    r"<(?:html|body|head|p|div|span|br|a|img|table|td|font|center)(?=[\s/>])", re.IGNORECASE
)


def looks_like_html(text: str) -> bool:
    """Whether ``text`` holds HTML markup (for a body whose MIME type was lost)."""
    return _HTML_TAG.search(text) is not None


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
    return ("" if root is None else visible_text(root)), urls


def visible_text(root: LexborNode) -> str:
    """The text under ``root``, with a space wherever a non-inline element starts or ends.

    One walk in document order, without recursion and without changing the tree, so the time
    is linear in the number of nodes however deep they nest. Comments and processing
    instructions give nothing.
    """
    pieces: list[str] = []
    top = root.mem_id
    node = root.child
    while node is not None:
        tag = node.tag
        if tag == "-text":
            pieces.append(node.text_content or "")
        elif tag is not None and not tag.startswith("-"):
            if tag not in _INLINE:
                pieces.append(" ")
            child = node.child
            if child is not None:
                node = child
                continue
        while node.next is None:  # climb out of every element this node ends
            parent = node.parent
            if parent is None or parent.mem_id == top:
                return "".join(pieces)
            if parent.tag not in _INLINE:
                pieces.append(" ")
            node = parent
        node = node.next
    return "".join(pieces)
