import pytest


@pytest.fixture
def page(browser_page):
    """The judgement pages' browser tests log in on the page themselves."""
    return browser_page
