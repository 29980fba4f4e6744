# Delivery (LMTP or LDA, sieve_before): run the message through spamfilter-filter, which adds
# the X-Spam headers, and file spam into Junk. Used as a test, "filter" is true when the program
# succeeded; with --exit-zero it succeeds for every verdict, and only an error (exit 3) leaves
# the message as it was, to be delivered to INBOX as usual. The mailbox owner's login (the
# name report-spam.sieve and report-ham.sieve train under) chooses the model that judges.
require ["vnd.dovecot.filter", "fileinto", "mailbox", "environment", "variables",
         "vnd.dovecot.environment"];

if environment :matches "vnd.dovecot.username" "*" {
  set "username" "${1}";
}

if filter "spamfilter-filter" ["--exit-zero", "--user=${username}"] {
  if header :is "X-Spam-Flag" "YES" {
    fileinto :create "Junk";
    stop;
  }
}
