-- With mail.spam_action=quarantine, spam gets its headers and is put on hold.
dofile(LIB)

local conn = open_session()
send_message(conn, SPAM, "SPAMQUEUE2")
reply_is(conn, SMFIR_CONTINUE, "end of message")
check(mt.eom_check(conn, MT_QUARANTINE), "spam not quarantined")
check_report_headers(conn, true)
mt.disconnect(conn)
