"""The present view in a frame (issue 42: Colab shows a widget's output in an iframe): it asks for the whole screen.

A chapter page in an iframe stands in for Colab's output frame: the same ``ui.js`` draws the page panel and the
widget, and the Fullscreen API is what a frame has to leave its box.
"""

import pytest


@pytest.fixture
def site(built_site):
    return built_site


def framed(browser, site, allow: bool):
    """A host page holding chapter 1's page in an iframe (allowed full screen or not); (context, page, frame)."""
    context = browser.new_context(viewport={'width': 1280, 'height': 800})
    page = context.new_page()
    attribute = 'allowfullscreen' if allow else ''
    page.set_content(f'<iframe {attribute} style="width: 900px; height: 500px" '
                     f'src="{site}notebooks/01_position_actuators.html"></iframe>')
    frame = page.frames[1]
    frame.wait_for_selector('#physai-panel-servo[data-drawn]', state='attached', timeout=60000)
    frame.evaluate('document.querySelector("#physai-panel-servo").scrollIntoView()')
    return context, page, frame


PRESENT = '#physai-panel-servo .pl-controls button:has-text("present")'


def test_in_a_frame_the_present_view_takes_the_screen_and_leaving_the_screen_ends_it(browser, site):
    context, page, frame = framed(browser, site, allow=True)
    try:
        frame.click(PRESENT)
        frame.wait_for_function('() => document.fullscreenElement?.id === "physai-panel-servo"', timeout=10000)
        assert frame.evaluate('document.querySelector("#physai-panel-servo").classList.contains("physai-panel-present")')
        # the frame now has the screen's size, and the present view fills it
        width = frame.evaluate('document.querySelector("#physai-panel-servo").getBoundingClientRect().width')
        assert width == pytest.approx(1280, abs=2)
        # the browser's own way out (its Esc never reaches the page): the present view ends with it
        frame.evaluate('document.exitFullscreen()')
        frame.wait_for_function('() => !document.querySelector("#physai-panel-servo")'
                                '.classList.contains("physai-panel-present")', timeout=10000)
        # and the present button again: in, then out by the panel's own button, leaving the screen too
        frame.click(PRESENT)
        frame.wait_for_function('() => document.fullscreenElement?.id === "physai-panel-servo"', timeout=10000)
        frame.click('#physai-panel-servo .pl-controls button:has-text("leave present")')
        frame.wait_for_function('() => document.fullscreenElement === null', timeout=10000)
        assert not frame.evaluate('document.querySelector("#physai-panel-servo").classList'
                                  '.contains("physai-panel-present")')
    finally:
        context.close()


def test_a_frame_not_allowed_the_screen_still_presents_in_its_box(browser, site):
    context, page, frame = framed(browser, site, allow=False)
    errors = []
    page.on('pageerror', lambda e: errors.append(str(e)))
    try:
        frame.click(PRESENT)
        frame.wait_for_function('() => document.querySelector("#physai-panel-servo")'
                                '.classList.contains("physai-panel-present")', timeout=10000)
        assert frame.evaluate('document.fullscreenElement') is None
        width = frame.evaluate('document.querySelector("#physai-panel-servo").getBoundingClientRect().width')
        assert width == pytest.approx(900, abs=25)   # the frame's box, less its scroll bar
        frame.press('#physai-panel-servo', 'Escape')
        frame.wait_for_function('() => !document.querySelector("#physai-panel-servo")'
                                '.classList.contains("physai-panel-present")', timeout=10000)
        assert errors == []
    finally:
        context.close()
