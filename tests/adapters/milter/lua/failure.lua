-- The service failed: the reply is mail.on_error's (EXPECT is "accept" or "tempfail").
dofile(LIB)

local expected = ({accept = SMFIR_ACCEPT, tempfail = SMFIR_TEMPFAIL})[EXPECT]
check(expected ~= nil, "EXPECT must be accept or tempfail")
local conn = open_session()
send_message(conn, HAM, "FAILQUEUE1")
reply_is(conn, expected, "end of message")
check(not mt.eom_check(conn, MT_HDRINSERT), "headers inserted without a classification")
mt.disconnect(conn)
