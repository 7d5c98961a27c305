"""Pulumi components for MirrorMaker 2 replication; the pure topology model lives in `topology`.

Errors: one root per layer, each message naming the component, the cause and the next step.

    Model and config generation (pure; raised at preview, before anything is registered)
    └── topology.model.TopologyError (ValueError)      every problem in the `mm2` stack config at once

    The program (components.program; raised before any resource is registered)
    └── program.StackConfigError (ValueError)          every problem of the `mm2` and `mm2-platform`
                                                       config and the local platform's Kafka jars at once

    Formats shared by the program, the operator commands and the Spark stage (pure)
    ├── outputs.contract.OutputsError (ValueError)     stack outputs missing or not the contract's shape
    └── mm2_records.RecordFormatError (ValueError)     a checkpoint/offset-sync/heartbeat record MM2 did
                                                       not write as documented

    Platforms (platform.errors.PlatformError, RuntimeError)
    ├── platform.settings.PlatformSettingsError        every problem in the `mm2-platform` config (also a
    │                                                  ValueError: raised at preview)
    ├── platform.local.process.ProcessError            a local JVM could not be started, probed or stopped
    └── platform.local.tls.TlsError                    keytool could not make the stack's TLS material

    Kafka Connect REST (connect.errors.ConnectError)
    ├── connect.errors.ConnectUnavailable              the worker group did not answer at all
    ├── connect.errors.ConnectTlsError                 its HTTPS certificate did not verify
    ├── connect.errors.ConnectRequestError             Connect answered with an error status
    ├── connect.errors.ConnectorFailed                 the connector or one of its tasks is FAILED
    ├── connect.errors.ConnectTimeout                  a bounded wait for a state ran out
    ├── connect.errors.ConnectorOperationFailed        a provider operation failed (read by `pulumi` users)
    └── rollout.RolloutError                           connectors did not restart after a credential change

    Kafka Admin API providers (kafka.admin.KafkaAdminError, RuntimeError)
    ├── kafka.topic.TopicError
    ├── kafka.acl.AclError
    └── kafka.scram.ScramError

    Operator commands (ops.errors.OpsError, RuntimeError)    bin/failover, bin/drill, bin/connectors;
                                                             they report OutputsError the same way

    Spark validation stage (spark.StageError, RuntimeError)
    ├── spark.kafka_io.KafkaAccessError                a cluster did not answer a metadata request
    └── spark.jars.JarResolutionError                  Maven could not provide Spark's Kafka source
"""
