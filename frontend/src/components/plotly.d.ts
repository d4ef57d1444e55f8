// plotly.js-cartesian-dist-min (bar, box, contour, heatmap, histogram, image, pie, scatter, violin …) ships
// no types of its own; its API is plotly.js's.
declare module "plotly.js-cartesian-dist-min" {
  import * as Plotly from "plotly.js";
  export default Plotly;
}
