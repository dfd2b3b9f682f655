// Renders the contract served beside this page. Every option that would make
// the page reach another host is off: it must work with no network. The
// page says it is loading (the scripts are deferred, so that text shows at
// once) until the contract is rendered, or why it could not be.
const loading = document.getElementById('loading');
if (typeof Redoc === 'undefined') {
  loading.textContent = 'The renderer of the API reference did not load. The contract itself is linked below.';
}
Redoc.init('openapi.json', {
  hideLoading: true, // the loading animation shows a logo from a CDN
  expandResponses: '200',
  jsonSampleExpandLevel: 3,
  pathInMiddlePanel: true,
  sortTagsAlphabetically: false,
  hideDownloadButton: false,
  downloadFileName: 'openapi.json',
  theme: { typography: { fontFamily: 'system-ui, sans-serif', headings: { fontFamily: 'system-ui, sans-serif' } } },
}, document.getElementById('reference'), (err) => {
  if (err) {
    loading.textContent = `The API reference could not be rendered: ${err.message || err}. The contract itself is linked below.`;
  } else {
    loading.remove();
  }
});
