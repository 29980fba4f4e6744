-- The message at HAM, sent to the envelope recipients RCPTS (comma-separated), must be judged
-- EXPECT (spam or ham): which model judged it shows in the verdict.
dofile(LIB)

local recipients = {}
for address in string.gmatch(RCPTS, "[^,]+") do
    table.insert(recipients, address)
end
local conn = open_session()
send_message(conn, HAM, "USERQUEUE1", recipients)
reply_is(conn, SMFIR_CONTINUE, "end of message")
check_report_headers(conn, EXPECT == "spam")
mt.disconnect(conn)
