# The dashboard's fixtures, re-exported (`name as name`) so pytest finds them for these tests.
from tests.dashboard.conftest import browser_page as browser_page
from tests.dashboard.conftest import owner as owner
from tests.dashboard.conftest import owner_client as owner_client
from tests.dashboard.conftest import teammate as teammate
from tests.dashboard.test_browser import page as page
