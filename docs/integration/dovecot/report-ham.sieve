# IMAPSieve: a message was copied or moved out of Junk, so the user says it is not spam,
# unless it went to Trash (deleting a spam message says nothing about it).
# Run by the imapsieve_mailbox2 rule of 90-spamfilter-imapsieve.conf.
require ["vnd.dovecot.pipe", "copy", "imapsieve", "environment", "variables"];

if environment :matches "imap.mailbox" "*" {
  set "mailbox" "${1}";
}

if string "${mailbox}" "Trash" {
  stop;
}

if environment :matches "imap.user" "*" {
  set "username" "${1}";
}

pipe :copy "spamfilter-learn" ["ham", "${username}"];
