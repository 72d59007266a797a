from facefusion_batch.launch import entry

entry()
