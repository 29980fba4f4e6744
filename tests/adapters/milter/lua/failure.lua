-- The service failed: the reply is mail.on_error's (EXPECT is "accept" or "tempfail").
-- Accepted unjudged, the message still loses the X-Spam-* fields it came with (SMFIR_CHGHEADER
-- deletions, then SMFIR_CONTINUE): a bare SMFIR_ACCEPT would deliver forged ones as ours.
dofile(LIB)

local expected = ({accept = SMFIR_CONTINUE, tempfail = SMFIR_TEMPFAIL})[EXPECT]
check(expected ~= nil, "EXPECT must be accept or tempfail")
local conn = open_session()
send_message(conn, HAM, "FAILQUEUE1")
reply_is(conn, expected, "end of message")
check(not mt.eom_check(conn, MT_HDRINSERT), "headers inserted without a classification")
if EXPECT == "accept" then
    check(mt.eom_check(conn, MT_HDRDELETE, "X-Spam-Flag"), "forged X-Spam-Flag kept")
    check(mt.eom_check(conn, MT_HDRDELETE, "X-Spam-Status"), "forged X-Spam-Status kept")
end
mt.disconnect(conn)
