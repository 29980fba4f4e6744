-- Over server.max_message_bytes the milter asks to skip the rest of the body, then still
-- classifies the head it kept.
dofile(LIB)

local conn = open_session()
local body_reply = send_message(conn, SPAM, "CAPQUEUE1")
check(body_reply == SMFIR_SKIP, "body chunk reply " .. string.char(body_reply))
reply_is(conn, SMFIR_CONTINUE, "end of message")
check_report_headers(conn, true)
mt.disconnect(conn)
