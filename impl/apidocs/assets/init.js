// Renders the contract served beside this page. Every option that would make
// the page reach another host is off: it must work with no network.
Redoc.init('openapi.json', {
  hideLoading: true, // the loading animation shows a logo from a CDN
  expandResponses: '200',
  jsonSampleExpandLevel: 3,
  pathInMiddlePanel: true,
  sortTagsAlphabetically: false,
  hideDownloadButton: false,
  downloadFileName: 'openapi.json',
  theme: { typography: { fontFamily: 'system-ui, sans-serif', headings: { fontFamily: 'system-ui, sans-serif' } } },
}, document.getElementById('reference'));
