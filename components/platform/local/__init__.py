"""The `local` platform: brokers and Connect workers as JVMs on 127.0.0.1 (see `deploy`)."""
