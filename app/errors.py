"""The one error hierarchy; every edge (HTTP, spamd, milter, CLI) maps it once."""


class SpamFilterError(Exception):
    """Base class of every error the service raises on purpose."""

    code = "spamfilter_error"


class InvalidMessage(SpamFilterError):
    """The input is not an RFC 822 message we can read."""

    code = "invalid_message"


class MessageTooLarge(SpamFilterError):
    """The input exceeds the hard size cap."""

    code = "message_too_large"


class InvalidLabel(SpamFilterError):
    """A label that is not one of the model's labels."""

    code = "invalid_label"


class StorageUnavailable(SpamFilterError):
    """The database cannot be reached, is locked for too long, or is not migrated."""

    code = "storage_unavailable"


class StorageWritesFailing(StorageUnavailable):
    """Reads work but writes fail: the database, or a file of it, is read-only, the disk is
    full, a privilege was revoked. Its text is the service's own (``read-only: ...`` or
    ``writes failing: ...``), naming no host, user or folder, so any client may read it."""


class Overloaded(SpamFilterError):
    """Too much is in flight (message bytes held in memory, connections); retry later."""

    code = "overloaded"


class StorageConflict(SpamFilterError):
    """A transaction lost a race (deadlock, serialisation failure); safe to retry."""

    code = "storage_conflict"


class ConfigurationError(SpamFilterError):
    """Settings that cannot work together (e.g. a public bind without API tokens)."""

    code = "configuration_error"


def describe(error: BaseException) -> str:
    """One line for a log or stderr: the service's error code (else the exception's type),
    then its text with newlines folded."""
    code = error.code if isinstance(error, SpamFilterError) else type(error).__name__
    detail = " ".join(str(error).split())
    return f"{code}: {detail}" if detail else code


class InvalidUser(SpamFilterError):
    """A user name that cannot name a model (too long, control characters, ``/``)."""

    code = "invalid_user"


class InvalidDataFile(SpamFilterError):
    """An export file that cannot be imported: wrong header or version, a malformed or
    out-of-order line (the message names its number), or a truncated file."""

    code = "invalid_data_file"


class TransferRefused(SpamFilterError):
    """An export, import or backup that would lose or double data unless told to: an import
    into a model that already has counts, a backup over an existing file."""

    code = "transfer_refused"


class UnknownUser(SpamFilterError):
    """A user who has no model of their own (nothing was ever learned for them)."""

    code = "unknown_user"
