"""`ffb benchmark`: end-to-end and model-bound speed, stage times, detector calls, peak memory and temp disk,
measured on cached clips of a real face, each configuration in a fresh worker process."""
