import sys

from svc_client.cli import main

sys.exit(main())
