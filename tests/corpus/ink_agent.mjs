// An agent-style terminal UI drawn by Ink (React for the terminal), for record.py's
// `ink_agent` recording: finished steps go to Ink's <Static> log above, which scrolls, while a
// bordered box below is drawn again at every tick (a spinner, elapsed time, a progress bar).
// That is how Ink programs (coding agents among them) draw: each frame erases the previous
// one's lines (EL 2 and CUU, one pair per line) and prints the new one.
import React, {useEffect, useState} from 'react';
import {Box, Static, Text, render, useApp} from 'ink';

const h = React.createElement;
const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const STEPS = 10;
const TICKS_PER_STEP = 4;

function App() {
  const {exit} = useApp();
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const timer = setInterval(() => setTick(t => t + 1), 40);
    return () => clearInterval(timer);
  }, []);
  const steps = Math.min(STEPS, Math.floor(tick / TICKS_PER_STEP));
  useEffect(() => {
    if (steps === STEPS) exit();
  }, [steps]);
  const done = Array.from({length: steps}, (_, i) => ({
    id: i,
    text: `step ${i}: edited src/module_${i}.ts (+${3 * i + 1} -${i})`,
  }));
  const filled = Math.floor((20 * steps) / STEPS);
  return h(React.Fragment, null,
    h(Static, {items: done}, item =>
      h(Text, {key: item.id}, h(Text, {color: 'green'}, '✔ '), item.text)),
    h(Box, {borderStyle: 'round', borderColor: 'cyan', paddingX: 1, flexDirection: 'column'},
      h(Text, null, h(Text, {color: 'cyan'}, SPINNER[tick % SPINNER.length]),
        ` Working… (${(tick * 0.04).toFixed(1)}s · esc to interrupt)`),
      h(Text, {dimColor: true},
        `${steps}/${STEPS} steps ${'█'.repeat(filled)}${'░'.repeat(20 - filled)}`)));
}

render(h(App));
