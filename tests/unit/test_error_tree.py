"""The error tree drawn in `components/__init__.py` is the tree the code has: every error class
of the project derives from its layer's root, and the drawing names each of them."""

from __future__ import annotations

import components
import spark
from components import program, rollout
from components.connect import errors as connect_errors
from components.kafka import acl, admin, scram, topic
from components.ops import errors as ops_errors
from components.platform import errors as platform_errors
from components.platform import settings as platform_settings
from components.platform.local import process, tls
from spark import jars, kafka_io

LAYERS = {
    platform_errors.PlatformError: (process.ProcessError, tls.TlsError, platform_settings.PlatformSettingsError),
    connect_errors.ConnectError: (
        connect_errors.ConnectUnavailable,
        connect_errors.ConnectTlsError,
        connect_errors.ConnectRequestError,
        connect_errors.ConnectorFailed,
        connect_errors.ConnectTimeout,
        connect_errors.ConnectorOperationFailed,
        rollout.RolloutError,
    ),
    admin.KafkaAdminError: (topic.TopicError, acl.AclError, scram.ScramError),
    ops_errors.OpsError: (),
    spark.StageError: (kafka_io.KafkaAccessError, jars.JarResolutionError),
}


def test_every_error_derives_from_its_layer_root() -> None:
    strays = {root.__name__: [e.__name__ for e in errors if not issubclass(e, root)] for root, errors in LAYERS.items()}
    assert strays == {root.__name__: [] for root in LAYERS}


def test_the_drawing_names_every_error() -> None:
    drawing = components.__doc__ or ""
    named = [cls.__name__ for root, errors in LAYERS.items() for cls in (root, *errors)]
    assert [name for name in named if name not in drawing] == []


def test_preview_time_config_errors_stay_value_errors() -> None:
    # The program and the engine treat these as bad input, not as a failed deployment.
    assert issubclass(platform_settings.PlatformSettingsError, ValueError)
    assert issubclass(program.StackConfigError, ValueError)
    assert "StackConfigError" in (components.__doc__ or "")
