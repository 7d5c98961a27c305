"""The stack's passwords (CredentialsProvider): generation and rotation, check errors, diffs."""

from __future__ import annotations

from components.credentials import CredentialsProvider, resolve


def test_generated_passwords_are_random_strong_and_kept() -> None:
    first = resolve(["a", "b"], {}, {}, {}, {}, {})
    assert first["a"] != first["b"] and len(first["a"]) >= 32
    assert set(first["a"]) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    again = resolve(["a", "b"], {}, {}, first, {}, {})
    assert again == first


def test_given_wins_and_rotation_labels_regenerate() -> None:
    old = {"a": "old-a", "b": "old-b", "c": "old-c"}
    values = resolve(["a", "b", "c"], {"a": "given-a"}, {"b": "2"}, old, {}, {"b": "1"})
    assert values["a"] == "given-a"
    assert values["b"] not in ("old-b", "")
    assert values["c"] == "old-c"
    # A key that is no longer given gets a fresh password, not the old given one.
    assert resolve(["a"], {}, {}, {"a": "given-a"}, {"a": "given-a"}, {})["a"] != "given-a"


def test_check_names_a_missing_required_secret_and_never_echoes_values() -> None:
    provider = CredentialsProvider()
    result = provider.check(
        {},
        {
            "generated": ["dr.mm2.password"],
            "required": ["dr.mm2.password", "ext.mm2.password"],
            "given": {"dr.mm2.password": 'has"quote'},
        },
    )
    reasons = [f.reason for f in result.failures]
    assert any("'ext.mm2.password'" in r and "pulumi config set --secret" in r for r in reasons)
    assert any("quote" in r for r in reasons)
    assert all('has"quote' not in r for r in reasons)


def test_credentials_diff_ignores_unrelated_given_keys() -> None:
    provider = CredentialsProvider()
    olds = {"generated": ["a"], "required": ["a"], "given": {"zzz": "1"}, "rotate": {}}
    news = {**olds, "given": {"zzz": "2"}}
    assert provider.diff("credentials", olds, news).changes is False
    assert provider.diff("credentials", olds, {**olds, "given": {"a": "x"}}).changes is True


def test_short_store_password_fails_the_preview() -> None:
    check = CredentialsProvider().check(
        {}, {"generated": ["tls.truststore.password"], "required": [], "given": {"tls.truststore.password": "abc"}}
    )
    assert len(check.failures) == 1
    assert "at least 6" in check.failures[0].reason and "abc" not in check.failures[0].reason


def test_missing_secret_of_an_external_tls_cluster_fails_the_preview() -> None:
    check = CredentialsProvider().check({}, {"generated": [], "required": ["dr.ssl.truststore.password"], "given": {}})
    assert len(check.failures) == 1
    reason = check.failures[0].reason
    assert "dr.ssl.truststore.password" in reason and "pulumi config set --secret" in reason


def test_quotes_and_backslashes_pass_only_for_quotable_keys_and_line_breaks_never() -> None:
    provider = CredentialsProvider()
    keys = ["primary.mm2.password", "mm2.rest.password", "dr.mm2.password"]
    given = {"primary.mm2.password": 'p"w\\', "mm2.rest.password": 'p"w\\', "dr.mm2.password": "a\nb"}
    news = {
        "generated": keys,
        "required": keys,
        "given": given,
        "quotable": ["primary.mm2.password", "dr.mm2.password"],
    }
    reasons = [f.reason for f in provider.check({}, news).failures]
    assert len(reasons) == 2, reasons
    assert any("'mm2.rest.password'" in r for r in reasons) and any("'dr.mm2.password'" in r for r in reasons)
    assert all('p"w' not in r and "a\nb" not in r for r in reasons)
