"""The mail report a classify carries for adapters: score on SpamAssassin's scale and X-Spam
headers."""

from __future__ import annotations

from collections.abc import Callable

from app.service import SpamFilter
from app.service.exposure import hide_token
from app.settings.schema import Settings
from tests.service.test_classify import HAMMY, SPAMMY, train

MakeService = Callable[..., SpamFilter]
MakeSettings = Callable[..., Settings]


def test_the_report_follows_the_verdict_and_the_configured_cut_off(
    make_service: MakeService, make_settings: MakeSettings
) -> None:
    service = make_service(make_settings(decision={"spam_log_odds": 6.0, "min_messages": 1}))
    train(service, 20)
    spam = service.classify(SPAMMY)
    ham = service.classify(HAMMY)
    spam_report = spam.mail_report
    ham_report = ham.mail_report

    assert spam.verdict == "spam" and spam_report.is_spam
    assert spam_report.score == round(min(999.0, spam.log_odds * 5.0 / 6.0), 1)
    assert spam_report.score >= spam_report.required == 5.0
    assert ("X-Spam-Flag", "YES") in spam_report.headers

    assert ham.verdict == "ham" and not ham_report.is_spam
    assert ham_report.score < 0
    assert "X-Spam-Flag" not in dict(ham_report.headers)
    assert dict(ham_report.headers)["X-Spam-Status"].startswith("No, ")


def test_unsure_is_not_spam_to_a_mail_server(service: SpamFilter) -> None:
    report = service.classify(SPAMMY).mail_report  # untrained: unsure
    assert not report.is_spam
    assert report.score == 0.0


def test_the_action_follows_the_mail_settings(
    make_service: MakeService, make_settings: MakeSettings
) -> None:
    def action(**mail: object) -> tuple[str, str]:
        service = make_service(
            make_settings(decision={"spam_log_odds": 6.0, "min_messages": 1}, mail=mail)
        )
        train(service, 20)
        spam = service.classify(SPAMMY).mail_report.action
        ham = service.classify(HAMMY).mail_report.action
        service.close()
        return spam, ham

    assert action() == ("accept", "accept")
    assert action(spam_action="quarantine") == ("quarantine", "accept")
    assert action(spam_action="reject", reject_log_odds=7.0) == ("reject", "accept")
    assert action(spam_action="reject", reject_log_odds=1e6) == ("accept", "accept")


def test_a_caller_who_proved_nothing_gets_hidden_values_in_the_headers_too(
    make_service: MakeService, make_settings: MakeSettings
) -> None:
    service = make_service(make_settings(decision={"spam_log_odds": 6.0, "min_messages": 1}))
    train(service, 20)
    full, seen = service.classify(SPAMMY), service.classify(SPAMMY, anonymous=True)
    assert [c.weight for c in seen.clues] == [c.weight for c in full.clues]
    assert [c.token for c in seen.clues] == [hide_token(c.token) for c in full.clues]
    hidden = [c.token for c in full.clues if hide_token(c.token) != c.token]
    assert hidden, "the sample spam is decided by header tokens too"
    assert seen.mail_report.score == full.mail_report.score
    shown = " ".join(value for _, value in seen.mail_report.headers)
    everything = " ".join(value for _, value in full.mail_report.headers)
    in_headers = [token for token in hidden if token in everything]
    assert in_headers, "the X-Spam-Status tests name a header token"
    for token in in_headers:
        assert token not in shown and hide_token(token) in shown
