# IMAPSieve: a message was copied or moved into a folder named after a class (Newsletter,
# Notification, ...), so the user says it is of that class: the folder's name in lower case
# is the class learned (Newsletter: newsletter). The class must be declared by the site
# (model.classes, docs/classes.md); spamfilter-learn refuses any other, and the refusal is
# in Dovecot's log. Run by an imapsieve_mailboxN rule per class folder, as in
# 93-spamfilter-learn-classes.conf.
require ["vnd.dovecot.pipe", "copy", "imapsieve", "environment", "variables"];

if environment :matches "imap.mailbox" "*" {
  set :lower "class" "${1}";
}

if environment :matches "imap.user" "*" {
  set "username" "${1}";
}

pipe :copy "spamfilter-learn" ["${class}", "${username}"];
