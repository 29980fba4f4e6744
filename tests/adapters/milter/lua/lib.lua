-- Shared by the scenario scripts. miltertest -D defines SOCKET (the milter, in libmilter
-- notation) and each script's message paths: PATH.headers holds "Name: value" lines,
-- PATH.body the body, sent with mt.bodyfile in 64 KiB chunks as miltertest reads it.
-- miltertest reports a failed script only by its exit status, so fail() prints first.

function fail(what)
    io.stderr:write("FAIL: " .. what .. "\n")
    error(what, 2)
end

function check(ok, what)
    if not ok then
        fail(what)
    end
end

function reply_is(conn, expected, what)
    local got = mt.getreply(conn)
    if got ~= expected then
        fail(string.format("%s: reply '%s', expected '%s'", what, string.char(got),
                           string.char(expected)))
    end
end

-- Connect, negotiate, and send the connection and HELO events.
function open_session()
    local conn = mt.connect(SOCKET, 40, 0.25)
    check(conn ~= nil, "cannot connect to " .. SOCKET)
    check(mt.negotiate(conn, nil, nil, nil) == nil, "option negotiation failed")
    check(mt.conninfo(conn, "client.example", "192.0.2.10") == nil, "mt.conninfo failed")
    reply_is(conn, SMFIR_CONTINUE, "connect")
    check(mt.helo(conn, "client.example") == nil, "mt.helo failed")
    reply_is(conn, SMFIR_CONTINUE, "HELO")
    return conn
end

-- The envelope, DATA and the header fields of the message at PATH; every step must continue.
-- RECIPIENTS (optional) lists the envelope recipients, by default user@ and other@.
function send_head(conn, path, queue_id, recipients)
    recipients = recipients or {"<user@example.net>", "<other@example.net>"}
    mt.macro(conn, SMFIC_MAIL, "i", queue_id)
    check(mt.mailfrom(conn, "<sender@example.org>", "BODY=8BITMIME") == nil, "mt.mailfrom")
    reply_is(conn, SMFIR_CONTINUE, "MAIL")
    for _, recipient in ipairs(recipients) do
        check(mt.rcptto(conn, recipient) == nil, "mt.rcptto " .. recipient)
        reply_is(conn, SMFIR_CONTINUE, "RCPT " .. recipient)
    end
    check(mt.data(conn) == nil, "mt.data")
    reply_is(conn, SMFIR_CONTINUE, "DATA")
    for line in io.lines(path .. ".headers") do
        local name, value = string.match(line, "^([^:]+):%s?(.*)$")
        check(name ~= nil, "bad header line in " .. path .. ".headers: " .. line)
        check(mt.header(conn, name, value) == nil, "mt.header " .. name)
        reply_is(conn, SMFIR_CONTINUE, "header " .. name)
    end
    check(mt.eoh(conn) == nil, "mt.eoh")
    reply_is(conn, SMFIR_CONTINUE, "EOH")
end

-- A whole message: head, body (the last chunk's reply is returned) and end of message.
function send_message(conn, path, queue_id, recipients)
    send_head(conn, path, queue_id, recipients)
    check(mt.bodyfile(conn, path .. ".body") == nil, "mt.bodyfile")
    local body_reply = mt.getreply(conn)
    check(mt.eom(conn) == nil, "mt.eom")
    return body_reply
end

-- The checks every classified, accepted message passes: our headers were inserted.
function check_report_headers(conn, spam)
    check(mt.eom_check(conn, MT_HDRINSERT, "X-Spam-Status"), "no X-Spam-Status inserted")
    check(mt.eom_check(conn, MT_HDRINSERT, "X-Spam-Level"), "no X-Spam-Level inserted")
    check(mt.eom_check(conn, MT_HDRINSERT, "X-Spam-Verdict"), "no X-Spam-Verdict inserted")
    local status = mt.getheader(conn, "X-Spam-Status", 0)
    check(status ~= nil, "X-Spam-Status not readable")
    if spam then
        check(mt.eom_check(conn, MT_HDRINSERT, "X-Spam-Flag", "YES"), "no X-Spam-Flag: YES")
        check(string.sub(status, 1, 4) == "Yes,", "X-Spam-Status of spam: " .. status)
    else
        check(not mt.eom_check(conn, MT_HDRINSERT, "X-Spam-Flag"), "X-Spam-Flag on ham")
        check(string.sub(status, 1, 3) == "No,", "X-Spam-Status of ham: " .. status)
    end
end
