-- A body of several 64 KiB chunks is buffered whole and classified.
dofile(LIB)

local conn = open_session()
local body_reply = send_message(conn, SPAM, "BIGQUEUE1")
check(body_reply == SMFIR_CONTINUE, "body chunk reply " .. string.char(body_reply))
reply_is(conn, SMFIR_CONTINUE, "end of message")
check_report_headers(conn, true)
mt.disconnect(conn)
