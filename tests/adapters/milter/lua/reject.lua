-- With mail.spam_action=reject, spam gets a 550 5.7.1 reply and no header edits.
dofile(LIB)

local conn = open_session()
send_message(conn, SPAM, "SPAMQUEUE1")
reply_is(conn, SMFIR_REPLYCODE, "end of message")
check(mt.eom_check(conn, MT_SMTPREPLY, "550", "5.7.1", "Message rejected as spam"),
      "not the 550 5.7.1 reply")
check(not mt.eom_check(conn, MT_HDRINSERT), "headers inserted into a rejected message")
mt.disconnect(conn)
