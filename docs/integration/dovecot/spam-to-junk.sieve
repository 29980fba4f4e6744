# Delivery (LMTP or LDA, sieve_before): run the message through spamfilter-filter, which adds
# the X-Spam headers, and file spam into Junk. Used as a test, "filter" is true when the program
# succeeded; with --exit-zero it succeeds for every verdict, and only an error (exit 3) leaves
# the message as it was, to be delivered to INBOX as usual.
require ["vnd.dovecot.filter", "fileinto", "mailbox"];

if filter "spamfilter-filter" ["--exit-zero"] {
  if header :is "X-Spam-Flag" "YES" {
    fileinto :create "Junk";
    stop;
  }
}
