"""The mail report adapters use: score on SpamAssassin's scale and X-Spam headers."""

from __future__ import annotations

from collections.abc import Callable

from app.service import SpamFilter
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
    spam_report = service.mail_report(spam)
    ham_report = service.mail_report(ham)

    assert spam.verdict == "spam" and spam_report.is_spam
    assert spam_report.score == round(min(999.0, spam.log_odds * 5.0 / 6.0), 1)
    assert spam_report.score >= spam_report.required == 5.0
    assert ("X-Spam-Flag", "YES") in spam_report.headers

    assert ham.verdict == "ham" and not ham_report.is_spam
    assert ham_report.score < 0
    assert "X-Spam-Flag" not in dict(ham_report.headers)
    assert dict(ham_report.headers)["X-Spam-Status"].startswith("No, ")


def test_unsure_is_not_spam_to_a_mail_server(service: SpamFilter) -> None:
    report = service.mail_report(service.classify(SPAMMY))  # untrained: unsure
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
        spam = service.mail_report(service.classify(SPAMMY)).action
        ham = service.mail_report(service.classify(HAMMY)).action
        service.close()
        return spam, ham

    assert action() == ("accept", "accept")
    assert action(spam_action="quarantine") == ("quarantine", "accept")
    assert action(spam_action="reject", reject_log_odds=7.0) == ("reject", "accept")
    assert action(spam_action="reject", reject_log_odds=1e6) == ("accept", "accept")
