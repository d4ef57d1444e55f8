// plotly.js-basic-dist-min (bar, scatter, pie) ships no types of its own; its API is plotly.js's.
declare module "plotly.js-basic-dist-min" {
  import * as Plotly from "plotly.js";
  export default Plotly;
}
