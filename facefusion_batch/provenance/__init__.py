"""Provenance of outputs: signed C2PA content credentials (credentials, manifest, sign), their verification
(`ffb verify`), and the opt-in visible label. Metadata marking lives in `facefusion_batch.marking`."""
