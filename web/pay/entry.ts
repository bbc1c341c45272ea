// Bundle entry of the payer's page: its style and its script.
import "./pay.css";
import "./main.ts";
