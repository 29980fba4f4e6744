# IMAPSieve: a message was copied or moved into Junk, so the user says it is spam.
# Run by the imapsieve_mailbox1 rule of 90-spamfilter-imapsieve.conf.
require ["vnd.dovecot.pipe", "copy", "imapsieve", "environment", "variables"];

if environment :matches "imap.user" "*" {
  set "username" "${1}";
}

pipe :copy "spamfilter-learn" ["spam", "${username}"];
