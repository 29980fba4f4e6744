-- A hostile message (HOSTILE), with mail.on_error = accept: judged (our headers inserted) or,
-- if judging failed, let through unjudged; either way SMFIR_CONTINUE, and the X-Spam-* fields
-- the sender forged are deleted.
dofile(LIB)

local conn = open_session()
send_message(conn, HOSTILE, "HOSTILEQUEUE1")
reply_is(conn, SMFIR_CONTINUE, "end of message")
check(mt.eom_check(conn, MT_HDRDELETE, "X-Spam-Flag"), "forged X-Spam-Flag kept")
check(mt.eom_check(conn, MT_HDRDELETE, "X-Spam-Status"), "forged X-Spam-Status kept")
mt.disconnect(conn)
