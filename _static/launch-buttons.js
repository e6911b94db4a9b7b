// The lectures are MyST Markdown notebooks: Colab cannot open a .md file and Binder opens it
// as plain text, so on those pages the launch menu is removed (their executed notebook is
// offered by the download menu as .ipynb). The labs, real .ipynb files, keep their buttons.
document.addEventListener("DOMContentLoaded", () => {
  for (const menu of document.querySelectorAll(".dropdown-launch-buttons")) {
    const links = [...menu.querySelectorAll("a[href]")];
    if (links.length && links.every((a) => /\.md(?=$|[?#&])/.test(a.getAttribute("href")))) {
      menu.remove();
    }
  }
});
