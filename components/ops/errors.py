"""The operator commands' errors, one tree:

OpsError                  an operator command cannot go on; the message names the component,
                          the cause and the next step (exit code 1)
components.outputs.contract.OutputsError
                          the stack outputs cannot be read or do not match the contract
                          (shared with the Spark stage, so not an OpsError; the commands
                          report it the same way)
components.mm2_records.RecordFormatError
                          a checkpoint record MM2 did not write as documented; the failover
                          reports it as an OpsError naming the topic and offset
"""

from __future__ import annotations


class OpsError(RuntimeError):
    """An operator command cannot go on; the message names the component, the cause and the next step."""
