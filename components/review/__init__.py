"""Review material: what a change does to running replication (blast_radius) and the
pull-request comment rendered from a preview (comment)."""
