import sys

try:
    from facefusion_batch.launch import entry
except KeyboardInterrupt:  # Ctrl-C in the first milliseconds, before ffb's own handlers are in
    sys.exit(130)

entry()
