"""The milter adapter: Sendmail's mail-filter protocol (version 6) for Postfix and Sendmail.

``protocol`` and ``responses`` are the pure codec (bytes in, typed commands out; typed
responses in, bytes out), ``session`` the per-connection state machine (also pure: it buffers
one message and turns a MailReport into responses), ``server`` the asyncio transport that
calls the service.
"""
