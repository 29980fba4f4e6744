"""Who a spamd client is: its address, and whether it is in the networks TELL is taken from.

The spamd protocol carries no credentials (spamc sends none), so the one thing that can
authenticate feedback is where it comes from, as spamd's ``--allowed-ips`` does.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable, Sequence

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def networks(specs: Iterable[str]) -> list[IPNetwork]:
    """The networks ``specs`` name (``spamd.tell_from``, already checked by the settings)."""
    return [ipaddress.ip_network(spec, strict=False) for spec in specs]


def peer_address(conn: socket.socket) -> IPAddress | None:
    """The address of the client on ``conn`` (an IPv4 address mapped into IPv6 as the IPv4
    address); None when it has none (a unix socket) or has gone already."""
    try:
        address = ipaddress.ip_address(conn.getpeername()[0])
    except (OSError, ValueError, IndexError, TypeError):
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def is_within(peer: IPAddress | None, allowed: Sequence[IPNetwork]) -> bool:
    """True when ``peer`` is in one of the ``allowed`` networks (never for no address)."""
    return peer is not None and any(peer in network for network in allowed)
