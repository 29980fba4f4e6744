"""HTML to visible text and link targets (selectolax/lexbor: ~10,000 docs/s here)."""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser

_INVISIBLE = ("script", "style", "noscript", "template", "head")
_LINK_ATTRIBUTES = (("a", "href"), ("img", "src"), ("area", "href"), ("form", "action"))
# Elements that sit inside a line of text: a browser draws "<b>V</b>iagra" as one word, so
# their tags are taken out of the markup before it is parsed. Every other element (p, div,
# td, br, li ...) separates words. Removing them as text keeps this linear: unwrapping them
# in the parsed tree costs time with the square of their nesting. Links stay in the tree for
# their targets and are unwrapped there (the parser never nests one link in another).
_INLINE_TAG = re.compile(
    r"</?(?:abbr|b|big|blink|cite|code|del|dfn|em|font|i|ins|kbd|label|mark|nobr|q|s|samp"
    r"|small|span|strike|strong|sub|sup|tt|u|var)(?:[\s/][^<>]*)?>",
    re.IGNORECASE,
)


def html_text_and_urls(html: str) -> tuple[str, list[str]]:
    """Visible text of an HTML document (no tags, scripts, styles or comments) and its absolute
    http(s) link and image targets, from one parse.

    Words are split where a browser splits them: a comment or an inline element inside a word
    (``fr<!-- -->ee``, ``<b>V</b>iagra``, both common ways to hide words from filters) leaves
    it whole, while block elements and line breaks separate.
    """
    tree = LexborHTMLParser(_INLINE_TAG.sub(lambda m: _unless_in_a_tag(html, m), html))
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
    tree.unwrap_tags(["a"])
    tree.merge_text_nodes()
    return root.text(separator=" "), urls


def _unless_in_a_tag(html: str, match: re.Match[str]) -> str:
    """ "" for an inline tag in text; the tag itself when it follows a tag left unclosed
    (``<font face=x <b>``), where a browser reads it as the end of that tag."""
    start = match.start()
    return match.group() if html.rfind("<", 0, start) > html.rfind(">", 0, start) else ""
