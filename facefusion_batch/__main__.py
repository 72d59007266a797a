from facefusion_batch.cli import entry

entry()
