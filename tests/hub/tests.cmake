# Hub tests run a local Hub look-alike on 127.0.0.1 (ephemeral port) that stops itself; each finishes in seconds.
set_tests_properties(hub/test_hub_download.py hub/test_hub_faults.py hub/test_hub_api.py hub/test_hub_interop.py PROPERTIES TIMEOUT 120)
