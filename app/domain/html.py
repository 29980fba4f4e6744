"""HTML to visible text and link targets (selectolax/lexbor: ~10,000 docs/s here)."""

from __future__ import annotations

import re
from dataclasses import dataclass

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

# A start or end tag; the name, then anything but another "<" up to ">" (so each "<" starts
# at most one scan, and a scan never passes the next "<": linear however the tags are broken).
_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9]*)[^<>]*>")
# Elements that never hold others (void) or whose end tag may be left out, so that a page of
# unclosed <p> or <td> is not deep: they are not counted by bound_depth.
_NOT_NESTING = frozenset(
    (
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
        "source", "track", "wbr", "p", "li", "dt", "dd", "tr", "td", "th", "option", "html",
        "head", "body", "tbody", "thead", "tfoot", "colgroup", "optgroup",
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


@dataclass(frozen=True, slots=True)
class HtmlContent:
    """What an HTML document gives: visible text, absolute link targets, and whether its
    markup nested deeper than the limit (the tags past it were read as spaces)."""

    text: str
    urls: list[str]
    too_deep: bool = False


def html_text_and_urls(html: str, max_depth: int = 256) -> HtmlContent:
    """Visible text of an HTML document (no tags, scripts, styles or comments) and its absolute
    http(s) link and image targets, from one parse.

    Words are split where a browser splits them: a comment or an inline element inside a word
    (``fr<!-- -->ee``, ``<b>V</b>iagra``, both common ways to hide words from filters) leaves
    it whole, while block elements and line breaks separate. Elements nested deeper than
    ``max_depth`` are flattened first (see ``bound_depth``).
    """
    html, too_deep = bound_depth(html, max_depth)
    tree = LexborHTMLParser(html)
    urls: list[str] = []
    for tag, attribute in _LINK_ATTRIBUTES:
        for node in tree.css(f"{tag}[{attribute}]"):
            value = node.attributes.get(attribute) or ""
            if value.lower().startswith(("http://", "https://")):
                urls.append(value)
    tree.strip_tags(list(_INVISIBLE))
    root = tree.body or tree.root
    return HtmlContent("" if root is None else visible_text(root), urls, too_deep)


def bound_depth(html: str, max_depth: int) -> tuple[str, bool]:
    """``html`` with every tag that would open an element deeper than ``max_depth`` (and its
    end tag) replaced by a space, or by nothing for an inline element; and whether any was.

    Why: building the tree costs time with the depth of the open elements for each new tag
    (100,000 nested ``<div>`` took 8 s), while no page a person reads nests hundreds deep
    (Chromium's parser stops nesting at 512). The count is a linear scan of the tags, with
    void elements and elements whose end tag may be left out (p, li, td ...) not counted.
    """
    if html.count("<") <= max_depth:
        return html, False
    depth = excess = 0
    pieces: list[str] = []
    last = 0
    for match in _TAG.finditer(html):
        name = match.group(2).lower()
        if name in _NOT_NESTING:
            continue
        if match.group(1):  # an end tag
            if not excess:
                depth = max(depth - 1, 0)
                continue
            excess -= 1
        elif depth < max_depth:
            depth += 1
            continue
        else:
            excess += 1
        pieces += (html[last : match.start()], "" if name in _INLINE else " ")
        last = match.end()
    if not pieces:
        return html, False
    pieces.append(html[last:])
    return "".join(pieces), True


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
