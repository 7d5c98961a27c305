"""Monitoring shared by every platform: the Prometheus JMX exporter's rules (`jmx_exporter`) and
the alert rules (`rules`). Pure: no pulumi import and no I/O."""
