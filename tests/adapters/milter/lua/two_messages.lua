-- Several transactions on one connection: spam, an aborted message, then ham. Each verdict
-- is the message's own (miltertest forgets the previous end-of-message edits at MAIL).
dofile(LIB)

local conn = open_session()
send_message(conn, SPAM, "FIRST")
reply_is(conn, SMFIR_CONTINUE, "first end of message")
check_report_headers(conn, true)

send_head(conn, SPAM, "ABORTED")
check(mt.bodystring(conn, "winner prize cash lottery\r\n") == nil, "mt.bodystring")
reply_is(conn, SMFIR_CONTINUE, "body of the aborted message")
check(mt.abort(conn) == nil, "mt.abort")

send_message(conn, HAM, "SECOND")
reply_is(conn, SMFIR_CONTINUE, "second end of message")
check_report_headers(conn, false)
mt.disconnect(conn)
