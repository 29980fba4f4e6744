-- The process's buffered-bytes budget has no room for BIG: the milter asks to skip the rest
-- of its body and tempfails it, whatever mail.on_error says (a full budget is transient).
-- SMALL, which fits, is then judged on the same connection.
dofile(LIB)

local conn = open_session()
local body_reply = send_message(conn, BIG, "FULLQUEUE1")
check(body_reply == SMFIR_SKIP, "body chunk reply " .. string.char(body_reply))
reply_is(conn, SMFIR_TEMPFAIL, "end of message (no room)")
check(not mt.eom_check(conn, MT_HDRINSERT), "headers inserted without a classification")
send_message(conn, SMALL, "FITQUEUE1")
reply_is(conn, SMFIR_CONTINUE, "end of message (fits)")
check(mt.eom_check(conn, MT_HDRINSERT, "X-Spam-Status"), "no X-Spam-Status inserted")
mt.disconnect(conn)
