"""What the Pulumi program exports, and the one way to read it back: `contract` (pure) and `loader`."""
