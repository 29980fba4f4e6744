"""SpamAssassin's spamd protocol: ``protocol`` is the pure bytes codec, ``server`` the transport.

spamc, Exim's ``spam=`` ACL condition and other spamc clients talk to ``spamfilter spamd``
unchanged; every request becomes one call of the service (classify, learn or forget).
"""
