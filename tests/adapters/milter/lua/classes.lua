-- X-Spam-Class: spam, then ham, on one connection; each gets the class the test expects
-- (SPAM_CLASS, HAM_CLASS), or no X-Spam-Class at all where the test expects "none".
dofile(LIB)

local function check_class(conn, expected)
    if expected == "none" then
        check(not mt.eom_check(conn, MT_HDRINSERT, "X-Spam-Class"), "X-Spam-Class inserted")
    else
        check(mt.eom_check(conn, MT_HDRINSERT, "X-Spam-Class", expected),
            "no X-Spam-Class: " .. expected)
    end
end

local conn = open_session()
send_message(conn, SPAM, "CLASSQUEUE1")
reply_is(conn, SMFIR_CONTINUE, "spam end of message")
check_report_headers(conn, true)
check_class(conn, SPAM_CLASS)

send_message(conn, HAM, "CLASSQUEUE2")
reply_is(conn, SMFIR_CONTINUE, "ham end of message")
check_report_headers(conn, false)
check_class(conn, HAM_CLASS)
mt.disconnect(conn)
