// A lab's install cell shows its title and folds its code (the hide-input tag). myst-nb gives the
// fold's <summary> the accessible name "Toggle hidden content", which is not its visible text
// ("Show code cell source"), so a screen reader or voice control would not match what is shown
// (WCAG 2.5.3, label in name). The label is taken off: the visible text names the button.
document.addEventListener("DOMContentLoaded", () => {
  for (const summary of document.querySelectorAll("details.hide > summary[aria-label]")) {
    summary.removeAttribute("aria-label");
  }
});
