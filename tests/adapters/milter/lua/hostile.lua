-- A hostile message (HOSTILE): judged, so SMFIR_CONTINUE with our headers inserted, and the
-- X-Spam-* fields the sender forged deleted.
dofile(LIB)

local conn = open_session()
send_message(conn, HOSTILE, "HOSTILEQUEUE1")
reply_is(conn, SMFIR_CONTINUE, "end of message")
check(mt.eom_check(conn, MT_HDRINSERT, "X-Spam-Status"), "no X-Spam-Status inserted: not judged")
check(mt.eom_check(conn, MT_HDRDELETE, "X-Spam-Flag"), "forged X-Spam-Flag kept")
check(mt.eom_check(conn, MT_HDRDELETE, "X-Spam-Status"), "forged X-Spam-Status kept")
mt.disconnect(conn)
